"""Distributions over a time Dim: the home of sequences whose steps depend on the steps before (Markov chains,
hidden Markov models, autoregressions), each a class registered like the others (`@register`).

The catalog has none yet; `docs/adding-a-distribution.md` says where a new one's facts live.
"""
