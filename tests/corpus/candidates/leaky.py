"""A candidate whose answers depend on the cases it served before (state leaks between cases).

Its first serial read after each LOAD says how many ROMs this process has
loaded; a grade of it is reproducible only if the same cases share a process
on every run.
"""

from _serve import IN, reply

loaded = 0
told = False
while True:
    line = IN.readline(300)
    if not line:
        break
    words = line.decode("ascii", "replace").split()
    if not words:
        continue
    verb = words[0]
    if verb == "HELLO":
        reply(b"OK playproof-corpus/1 leaky\n")
    elif verb == "LOAD":
        IN.read(int(words[1]))
        loaded, told = loaded + 1, False
        reply(b"OK\n")
    elif verb == "FRAMES":
        reply(b"OK\n")
    elif verb == "SERIAL":
        text = b"" if told else b"loaded %d\n" % loaded
        told = True
        reply(b"DATA %d\n" % len(text) + text)
    elif verb == "MEM":
        block = bytes(int(words[2]))
        reply(b"DATA %d\n" % len(block) + block)
    elif verb == "QUIT":
        reply(b"OK\n")
        break
    else:
        reply(b"ERR no\n")
