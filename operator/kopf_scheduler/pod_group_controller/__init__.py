"""The PodGroup controller of gang scheduling: member counts, the status phase, and its writes.

The Coscheduling plugin decides whether a group's pods may be bound; this package keeps each
PodGroup's ``status`` current, as scheduler-plugins' PodGroup controller does beside its
scheduler, so ``kubectl get podgroups`` reads the same with either. It stays free of kopf and the
API client: the operator feeds it watch events and gives it a writer (``kopf_watches/``, ``k8s/``).
"""
