"""Keras files: ``.keras`` models, ``.weights.h5`` weights, ``.npz`` weights and the compile config.

Below :mod:`phalanx.models` as in Keras (``keras/src/saving``): the model classes hand their
configuration to these writers and readers.
"""
