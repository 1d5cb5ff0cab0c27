local x = nil
kernel "k" { x.y }
