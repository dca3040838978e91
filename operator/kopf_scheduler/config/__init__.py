"""KubeSchedulerConfiguration (v1 subset): parse, default, validate, and expand into plugins.

Admins move configs between kube-scheduler, scheduler-plugins and the simulator, so we read the
same file format and reject what we cannot honour (unknown fields, unknown plugins, bad values)
at start, naming the file, the field path and the reason.
"""
