"""Scripted agents: reference solutions driven through naive, retry and robust policies."""
