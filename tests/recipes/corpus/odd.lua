string.rep = nil
kernel "ÿş" {}
print(("x"):rep(10))
