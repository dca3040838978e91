"""The running operator: process wiring, logging, health and metrics endpoints, explanations.

Everything here runs only in a cluster; the scheduling core knows none of it.
"""
