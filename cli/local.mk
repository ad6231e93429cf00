# cli/ - (filled in by its issue)
