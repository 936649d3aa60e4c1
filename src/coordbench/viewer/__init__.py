"""The episode viewer: a run's conditions and episodes in the browser (`coordbench view`).

`index` lists episodes cheaply (file names plus each file's first and last line), `timeline`
turns one trajectory into lanes per agent, `replay` rebuilds the state at every step through
the family's own engine, `server` serves all of it on 127.0.0.1, `export` writes one episode
as a single self-contained HTML file. docs/viewer.md describes it.
"""
