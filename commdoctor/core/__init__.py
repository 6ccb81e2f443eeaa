"""The leaves every layer shares: standard library only, and nothing of commdoctor's but each other.

Probes, loaders, checks, the pipeline, the sinks and the hooks inside a
training job may all import these modules; they import none of those layers
(tests/test_layering.py holds them to it).
"""
