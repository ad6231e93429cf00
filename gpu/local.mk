# gpu/ - (filled in by its issue)
