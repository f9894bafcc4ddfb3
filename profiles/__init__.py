"""Shipped fault profiles (YAML), installed as package data of chaosproxy.profiles."""
