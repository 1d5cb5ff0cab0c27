error({ message = 42 })
