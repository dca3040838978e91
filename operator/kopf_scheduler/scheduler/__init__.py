"""The scheduling loop: pop a pod, find it a node (or preempt), assume it, bind in the background.

``algorithm`` holds the pure decision (filter, score, select). ``scheduling_cycle`` runs it for
one popped pod and assumes, reserves and permits the pod; ``binding_cycle`` binds it in the
background, at most a bounded number at once; ``failure_handler`` requeues a pod whose
``attempt`` failed in either cycle and reports it, with ``failure`` deciding what the user sees
(condition, event) and ``reporting`` writing it through the ports. ``periodic`` flushes the
queue and expires assumed pods, and ``loop`` wires it all into the :class:`Scheduler` that runs
until stopped.
"""
