"""Tools shared by tests, the benchmark and scripts: a real control plane,
gateway processes, wrk. Never imported by :mod:`gateway`.
"""
