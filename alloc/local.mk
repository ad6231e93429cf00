# alloc/ - (filled in by its issue)
