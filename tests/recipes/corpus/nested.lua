local t = {}
for i = 1, 200 do t = { t } end
kernel "k" { cpu { source = t, targets = t, entry = t, flags = t, launch = t } }
