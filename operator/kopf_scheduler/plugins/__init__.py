"""The default plugins of kube-scheduler, one module each, under their upstream names.

Every module exports ``NAME`` (the upstream plugin name), the plugin class, and
``new(args, handle)``, the factory the registry calls with the raw ``pluginConfig`` args.
"""
