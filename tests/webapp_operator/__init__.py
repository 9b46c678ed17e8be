"""The WebApp operator: pure parts (unit tests) and the real process on a real cluster."""
