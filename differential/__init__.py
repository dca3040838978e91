"""The differential suite: the same scenario, once with kube-scheduler v1.34.10 and once with ours.

A scenario (:mod:`differential.scenario`) is a small cluster state plus pods that arrive in
waves; :mod:`differential.generator` draws one from a seed. :mod:`differential.runner` plays it
on the local control plane for one scheduler at a time and records what the API server shows;
:mod:`differential.normalise` turns that record into an :class:`~differential.normalise.Outcome`
whose names and UIDs no longer depend on the run; :mod:`differential.compare` sets ours beside
upstream's and, when they differ, beside upstream's reruns, so that upstream's own
nondeterminism is told apart from a true divergence. :mod:`differential.campaign` runs seeds and
saved cases (:mod:`differential.cases`), :mod:`differential.report` writes ``docs/fidelity.md``,
:mod:`differential.chart` draws its per-aspect chart from the campaigns
:mod:`differential.history` reads back from the file and its versions in git, and
:mod:`differential.reduce` shrinks a divergent scenario to a case worth keeping.

``python -m differential --help`` lists the commands.
"""
