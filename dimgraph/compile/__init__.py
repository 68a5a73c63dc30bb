"""The compile layer: lowering, rewriting and a backend turned into one cached callable (`dg.function`)."""
