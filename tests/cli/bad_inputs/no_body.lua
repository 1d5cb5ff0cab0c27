kernel "k"
