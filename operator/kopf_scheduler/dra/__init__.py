"""Dynamic Resource Allocation: kube-scheduler v1.34's device allocator and CEL selectors.

Pure functions of the raw ``resource.k8s.io/v1`` objects: given DeviceClasses, ResourceSlices,
the devices in use and a node, :class:`~kopf_scheduler.dra.allocator.Allocator` picks the
devices a pod's claims get there, as upstream's structured-parameters allocator does. The
DynamicResources plugin drives it; nothing here talks to the API server.
"""
