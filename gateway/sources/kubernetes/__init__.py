"""The Kubernetes source: credentials, the list/watch informer and its parse pipeline."""
