"""One run against its device's ceilings, in modules by concept:

- `roofline`: the whole analysis (`roofline()`), from the pieces below;
- `inputs`: what it reads from a record (labeled numbers, step time, per-op work);
- `mathmode`: the math each op ran in (kernel names, counters, policy);
- `context`: the roofs and op maths a record is judged with, gathered once;
- `points`: placing a point under its roofs, and the whole-run point; `results`: their types;
- `ops`: the per-op rows; `reconcile`: per-op times that add up to the measured step;
- `above_roof`: why a point sits above its roof (doubted roofs, the machine check, flags);
- `levels`: the hierarchical roofline (memory levels);
- `measured`: counted against measured work; `utilization`: rates over measured and spec
  ceilings, clocks and CPU load.
"""
