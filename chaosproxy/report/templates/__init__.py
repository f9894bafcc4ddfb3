"""The report's HTML, CSS and JS, shipped as package data."""
