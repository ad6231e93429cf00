#!/bin/sh
# launcher.sh - a launcher as pyenv's shims are (tests/launcher_summary.sh):
# a shell script that starts 12 tiny processes, then execs the interpreter
# with the program it was given.
for i in 1 2 3 4 5 6 7 8 9 10 11 12; do
    /bin/ls / > /dev/null
done
exec "$@"
