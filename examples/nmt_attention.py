"""Neural machine translation with attention (TensorFlow's NMT tutorial), trained by ``fit``.

The tutorial's model, small: a ``GRU`` encoder over the embedded source
sentence, a ``GRU`` decoder started from the encoder's final state and fed the
target shifted right by one (teacher forcing: ``<start>`` then the true previous
words), Bahdanau's additive attention of each decoder step over the encoder's
outputs (``score = V(tanh(W1(encoder) + W2(decoder)))``, padding masked out),
and a ``Dense`` over the vocabulary from the context and the decoder's output.
The loss is the cross-entropy of each target word, masked: padding counts
nowhere, each sentence is the mean over its real words.

The translation set is synthetic and made here: a "sentence" is 3 to 7 random
words; its translation is the sentence reversed, each word mapped through a
fixed permutation of the vocabulary. Index 0 pads (``Embedding(mask_zero=True)``),
1 is ``<start>``, 2 ``<end>``.

It trains under ``MirroredStrategy`` and under ``TPUStrategy`` (simulated on the
CPU devices). ``translator(keras)`` builds the same model with Keras 3 (the test
compares the loss curves from the same initial weights).

    python examples/nmt_attention.py                       # every local device
    PHALANX_CPU_DEVICES=4 python examples/nmt_attention.py
"""

from __future__ import annotations

import warnings

import jax
import jax.numpy as jnp
import numpy as np

import phalanx

VOCAB, MAX_WORDS, PAD, START, END = 24, 7, 0, 1, 2


def make_data(n: int, seed: int = 0) -> tuple[dict, np.ndarray]:
    """``n`` sentence pairs: ``({"source", "target_in"}, target_out)``, int32, 0-padded.

    ``target_in`` is ``<start>`` + the translation (the decoder's teacher-forced
    input); ``target_out`` the translation + ``<end>`` (the words to predict).
    """
    rng = np.random.default_rng(seed)
    permutation = np.random.default_rng(1234).permutation(np.arange(3, VOCAB))
    length = MAX_WORDS + 1
    source = np.zeros((n, length), np.int32)
    target_in = np.zeros((n, length), np.int32)
    target_out = np.zeros((n, length), np.int32)
    for i in range(n):
        words = rng.integers(3, VOCAB, rng.integers(3, MAX_WORDS + 1))
        translation = permutation[words[::-1] - 3]
        source[i, : len(words)] = words
        target_in[i, : len(words) + 1] = [START, *translation]
        target_out[i, : len(words) + 1] = [*translation, END]
    return {"source": source, "target_in": target_in}, target_out


def masked_loss(y_true, logits):
    """Each sentence's mean cross-entropy over its real words (padding, 0, counts nowhere)."""
    labels = jnp.asarray(y_true, jnp.int32)
    log_probs = jax.nn.log_softmax(logits, axis=-1)
    nll = -jnp.take_along_axis(log_probs, labels[..., None], axis=-1)[..., 0]
    mask = (labels != PAD).astype(nll.dtype)
    return jnp.sum(nll * mask, axis=-1) / jnp.maximum(jnp.sum(mask, axis=-1), 1.0)


def translator(lib, units: int = 32, embed: int = 16):
    """The encoder-decoder with attention, built with ``lib`` (``phalanx``, or ``keras``)."""
    layers = lib.layers

    class Translator(lib.Model):
        def __init__(self):
            super().__init__()
            self.source_embedding = layers.Embedding(VOCAB, embed, mask_zero=True)
            self.encoder = layers.GRU(units, return_sequences=True, return_state=True)
            self.target_embedding = layers.Embedding(VOCAB, embed, mask_zero=True)
            self.decoder = layers.GRU(units, return_sequences=True, return_state=True)
            self.w1 = layers.Dense(units)  # Bahdanau: the encoder's outputs (keys)
            self.w2 = layers.Dense(units)  # the decoder's outputs (queries)
            self.v = layers.Dense(1)
            self.out = layers.Dense(VOCAB)

        def call(self, inputs, training=False):
            source, target_in = inputs["source"], inputs["target_in"]
            source_mask, target_mask = source != PAD, target_in != PAD
            encoded, state = self.encoder(self.source_embedding(source), mask=source_mask)
            decoded, _ = self.decoder(
                self.target_embedding(target_in), initial_state=state, mask=target_mask
            )
            # score[b, t, s] = v(tanh(W1 encoded[b, s] + W2 decoded[b, t])), padding masked.
            keys = jnp.expand_dims(self.w1(encoded), 1)
            queries = jnp.expand_dims(self.w2(decoded), 2)
            score = self.v(jnp.tanh(keys + queries))[..., 0]
            score = jnp.where(source_mask[:, None, :], score, -1e9)
            weights = jax.nn.softmax(score, axis=-1)
            context = jnp.einsum("bts,bsu->btu", weights, encoded)
            return self.out(jnp.concatenate([context, decoded], axis=-1))

    return Translator()


def train(strategy, x, y, *, epochs: int, batch_size: int, weights=None, fused: int = 4) -> dict:
    """Trains a new translator under ``strategy``, ``fused`` steps per program (from
    ``weights``, ``{layer: get_weights()}``, when given); returns its history and model."""
    with strategy.scope():
        model = translator(phalanx)
        model.build({k: (None, *v.shape[1:]) for k, v in x.items()})
        if weights is not None:
            for name, values in weights.items():
                getattr(model, name).set_weights(values)
        model.compile(
            optimizer=phalanx.optimizers.Adam(0.01), loss=masked_loss, steps_per_execution=fused
        )
    with warnings.catch_warnings():  # small batches, on purpose: TPUStrategy advises 128s
        warnings.filterwarnings("ignore", message="TPUStrategy: the per-replica batch")
        history = model.fit(x, y, epochs=epochs, batch_size=batch_size, shuffle=False, verbose=0)
    return {"history": history.history, "model": model}


def main(examples: int = 256, epochs: int = 8, batch_size: int = 32, fused: int = 4) -> dict:
    """Trains under MirroredStrategy and TPUStrategy; prints the loss curves."""
    x, y = make_data(examples)
    mirrored = phalanx.MirroredStrategy()
    print(f"Number of devices: {mirrored.num_replicas_in_sync}")
    results = {}
    for name, strategy in (
        ("MirroredStrategy", mirrored),
        ("TPUStrategy", phalanx.TPUStrategy(experimental_simulate_on_cpu=True)),
    ):
        run = train(strategy, x, y, epochs=epochs, batch_size=batch_size, fused=fused)
        results[name] = run["history"]
        curve = " ".join(f"{v:.3f}" for v in results[name]["loss"])
        print(f"{name}: loss per epoch {curve}")
    return results


if __name__ == "__main__":
    main()
