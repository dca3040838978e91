"""The scheduling loop: pop a pod, find it a node (or preempt), assume it, bind in the background.

``algorithm`` holds the pure decision (filter, score, select); ``failure`` turns a failed attempt
into what the user sees (condition, event) and what the queue does next; ``loop`` drives both
through the ports.
"""
