"""flame_frames.py - the hover layer of a memflow SVG (the frames of
flamegraph.svg, the blocks and legend rows of memory_flow.svg), one entry a
line, for the call-stack tests: "X Y W H|TITLE" with the title's lines
joined by '|'.  Reading the file with a real XML parser also proves it is
well-formed.

Usage: flame_frames.py FILE.svg
"""
import sys
import xml.etree.ElementTree as ET

NS = "{http://www.w3.org/2000/svg}"
for g in ET.parse(sys.argv[1]).getroot().iter(NS + "g"):
    if g.get("id") != "memflow-hover":
        continue
    for rect in g.iter(NS + "rect"):
        title = rect.find(NS + "title")
        print("%s %s %s %s|%s" % (rect.get("x"), rect.get("y"), rect.get("width"),
                                  rect.get("height"), title.text.replace("\n", "|")))
