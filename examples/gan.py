"""A small DCGAN trained by ``fit`` with an overridden ``train_step`` and two optimizers.

keras-io's "DCGAN overriding train_step" in Keras 3's JAX form: a
convolutional discriminator (strided ``Conv2D`` + ``LeakyReLU``, ``Dropout``,
one logit) and a generator (``Dense`` -> ``Reshape`` -> ``Conv2D`` s) trained
against each other. Each step first trains the discriminator on generated
and real images (with noisy labels), then the generator through the
discriminator with "all real" labels; each part has its own Adam
(``compile(optimizer={"discriminator": ..., "generator": ...})``: the state's
``optimizer_variables`` has one entry per part). The data are MNIST-like
synthetic 8x8 images: one bright bar, horizontal or vertical, at a random row
or column. ``fit`` runs under ``MirroredStrategy``: every local device is a
replica.

    python examples/gan.py                       # every local device
    PHALANX_CPU_DEVICES=4 python examples/gan.py
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

import phalanx
from phalanx import layers

SIZE, LATENT = 8, 16


def bars(n: int, seed: int = 0) -> np.ndarray:
    """``n`` images ``[n, 8, 8, 1]`` in [0, 1]: one bar each, with a little noise."""
    rng = np.random.default_rng(seed)
    images = np.zeros((n, SIZE, SIZE, 1), np.float32)
    where = rng.integers(1, SIZE - 1, n)
    vertical = rng.random(n) < 0.5
    for i in range(n):
        if vertical[i]:
            images[i, :, where[i], 0] = 1.0
        else:
            images[i, where[i], :, 0] = 1.0
    return np.clip(images + rng.normal(0, 0.05, images.shape), 0, 1).astype(np.float32)


class GAN(phalanx.Model):
    """The generator and discriminator, as two lists of layers (the state's two parts)."""

    def __init__(self, latent_dim: int = LATENT):
        super().__init__()
        self.latent_dim = latent_dim
        self.discriminator = [
            layers.Conv2D(16, 3, strides=2, padding="same"),
            layers.LeakyReLU(negative_slope=0.2),
            layers.Conv2D(32, 3, strides=2, padding="same"),
            layers.LeakyReLU(negative_slope=0.2),
            layers.Flatten(),
            layers.Dropout(0.2),
            layers.Dense(1),
        ]
        self.generator = [
            layers.Dense(4 * 4 * 16),
            layers.LeakyReLU(negative_slope=0.2),
            layers.Reshape((4, 4, 16)),
            layers.Conv2D(64, 3, padding="same"),
            layers.LeakyReLU(negative_slope=0.2),
            layers.Reshape((8, 8, 16)),  # 4x4x64 -> 8x8x16, where DCGAN has Conv2DTranspose
            layers.Conv2D(1, 3, padding="same", activation="sigmoid"),
        ]
        self.d_loss_tracker = phalanx.metrics.Mean(name="d_loss")
        self.g_loss_tracker = phalanx.metrics.Mean(name="g_loss")

    def call(self, inputs, training=False):
        """``{"fake": D(G(z)), "real": D(images), "generated": G(z)}``."""
        generated = inputs["z"]
        for layer in self.generator:
            generated = layer(generated, training=training)
        out = {"generated": generated}
        for name, x in (("fake", generated), ("real", inputs["images"])):
            for layer in self.discriminator:
                x = layer(x, training=training)
            out[name] = x
        return out

    @property
    def metrics(self):
        return [self.d_loss_tracker, self.g_loss_tracker]

    def compile(self, d_optimizer, g_optimizer, loss_fn):
        super().compile(optimizer={"discriminator": d_optimizer, "generator": g_optimizer})
        self.d_optimizer, self.g_optimizer, self.loss_fn = d_optimizer, g_optimizer, loss_fn

    def train_step(self, state, data):
        trainable, non_trainable, optimizer_variables, metrics_variables = state
        real = data
        batch = real.shape[0]

        # 1. The discriminator: generated images are "fake" (0), real ones "real" (1).
        z = jax.random.normal(self.random_key(), (batch, self.latent_dim))
        labels = jnp.concatenate([jnp.zeros((batch, 1)), jnp.ones((batch, 1))])
        labels += 0.05 * jax.random.uniform(self.random_key(), labels.shape)  # the trick

        def d_loss_fn(tv):
            out, ntv = self.stateless_call(
                tv, non_trainable, {"z": z, "images": real}, training=True
            )
            logits = jnp.concatenate([out["fake"], out["real"]])
            return self.loss_fn(labels, logits), ntv

        (d_loss, non_trainable), grads = jax.value_and_grad(d_loss_fn, has_aux=True)(trainable)
        trainable["discriminator"], optimizer_variables["discriminator"] = (
            self.d_optimizer.stateless_apply(
                optimizer_variables["discriminator"],
                grads["discriminator"],
                trainable["discriminator"],
            )
        )

        # 2. The generator, through the discriminator: its images should look "real".
        z = jax.random.normal(self.random_key(), (batch, self.latent_dim))

        def g_loss_fn(tv):
            out, ntv = self.stateless_call(
                tv, non_trainable, {"z": z, "images": real}, training=True
            )
            return self.loss_fn(jnp.ones((batch, 1)), out["fake"]), ntv

        (g_loss, non_trainable), grads = jax.value_and_grad(g_loss_fn, has_aux=True)(trainable)
        trainable["generator"], optimizer_variables["generator"] = self.g_optimizer.stateless_apply(
            optimizer_variables["generator"], grads["generator"], trainable["generator"]
        )

        n = len(self.d_loss_tracker.variables)
        d_vars = self.d_loss_tracker.stateless_update_state(metrics_variables[:n], d_loss)
        g_vars = self.g_loss_tracker.stateless_update_state(metrics_variables[n:], g_loss)
        logs = {
            "d_loss": self.d_loss_tracker.stateless_result(d_vars),
            "g_loss": self.g_loss_tracker.stateless_result(g_vars),
        }
        return logs, (trainable, non_trainable, optimizer_variables, d_vars + g_vars)

    def predict_step(self, state, data):
        """Generated images for latent vectors ``data``."""
        trainable, non_trainable = state
        images = jnp.zeros((data.shape[0], SIZE, SIZE, 1))
        out, non_trainable = self.stateless_call(
            trainable, non_trainable, {"z": data, "images": images}, training=False
        )
        return out["generated"], non_trainable


def main(examples: int = 512, epochs: int = 3, batch_size: int = 64) -> dict:
    """Trains the GAN; returns its history and a few generated images."""
    strategy = phalanx.MirroredStrategy()
    print(f"Number of devices: {strategy.num_replicas_in_sync}")
    images = bars(examples)
    with strategy.scope():
        gan = GAN()
        gan.build({"z": (None, LATENT), "images": (None, SIZE, SIZE, 1)})
        gan.compile(
            d_optimizer=phalanx.optimizers.Adam(learning_rate=0.0003),
            g_optimizer=phalanx.optimizers.Adam(learning_rate=0.0003),
            loss_fn=phalanx.losses.BinaryCrossentropy(from_logits=True),
        )
    history = gan.fit(images, epochs=epochs, batch_size=batch_size, verbose=2)
    z = np.random.default_rng(1).normal(size=(4, LATENT)).astype(np.float32)
    generated = gan.predict(z, verbose=0)
    print("generated images:", generated.shape, f"mean {generated.mean():.3f}")
    return {"history": history.history, "generated": generated}


if __name__ == "__main__":
    main()
