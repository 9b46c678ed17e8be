"""The WebApp operator (kopf): reconcile, status, finalizer, webhook, leader election."""
