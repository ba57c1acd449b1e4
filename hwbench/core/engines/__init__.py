"""Execution engines (numpy, JAX, TensorFlow, ONNX Runtime). Each imports its library lazily."""
