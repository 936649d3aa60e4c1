"""`coordbench reproduce PAPER`: a paper's analyses rerun on coordbench, next to its numbers.

Each paper is one `Paper` record (`paper.py`: its module, the pieces it has, the options it
takes) and one module with the same functions: `plan(options, out)` returns the conditions
its analyses need (played by the one runner, so a run resumes and uses any executor),
`labels`, `resources`, and `study(run, options, out)` recomputes every analysis from the
saved trajectories and returns a `Study`: per table or figure, what the paper reports, what
coordbench measures and whether each finding holds. `run.run_study` plays a study for any
number of models; `write.write_study` turns a Study into reproduce.md, reproduce.html, PNG
figures and findings.json.
"""
