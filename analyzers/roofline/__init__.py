"""One run against its device's ceilings: the roofline per op and for the run (`roofline`,
`ops`, `levels`, `inputs`), the math each op ran in (`mathmode`), the doubts about a roof and
a result (`doubts`, `flags`, `machine_speed`), counted against measured work (`measured`,
`reconcile`) and utilization of the device (`utilization`).
"""
