"""A small transformer classifier, built with Keras's functional API, trained with fit.

Each 8x8 digit (phalanx ships the 1,797 UCI digits) is read as a sequence
of 8 rows of 8 pixels: a ``Conv1D`` embeds the rows (its window gives each
token its neighbours, in place of a position embedding), one transformer
block (``MultiHeadAttention`` with residual ``Add`` and
``LayerNormalization``, then a feed-forward block) mixes them, and
``GlobalAveragePooling1D`` + ``Dense`` classify. ``fit`` runs under
``MirroredStrategy``: every local device is a replica, each step's global
batch is split over them.

    python examples/transformer_classifier.py             # every local device
    PHALANX_CPU_DEVICES=4 python examples/transformer_classifier.py
"""

from __future__ import annotations

import phalanx
from phalanx import layers

EMBED, HEADS, FFN = 32, 4, 64


def transformer_block(x, name: str):
    """Self-attention and a feed-forward network, each with a residual and a LayerNorm."""
    attention = layers.MultiHeadAttention(
        num_heads=HEADS, key_dim=EMBED // HEADS, dropout=0.1, name=f"{name}_attention"
    )(x, x)
    x = layers.LayerNormalization(name=f"{name}_norm1")(layers.Add()([x, attention]))
    hidden = layers.Dense(FFN, activation="relu", name=f"{name}_ffn1")(x)
    hidden = layers.Dense(EMBED, name=f"{name}_ffn2")(layers.Dropout(0.1)(hidden))
    return layers.LayerNormalization(name=f"{name}_norm2")(layers.Add()([x, hidden]))


def build_model() -> phalanx.Model:
    """The functional model: rows of pixels in, 10 class probabilities out."""
    rows = phalanx.Input(shape=(8, 8), name="rows")
    x = layers.Conv1D(EMBED, 3, padding="same", activation="relu", name="embed")(rows)
    x = transformer_block(x, "block1")
    x = layers.GlobalAveragePooling1D()(x)
    outputs = layers.Dense(10, activation="softmax", name="classes")(layers.Dropout(0.1)(x))
    return phalanx.Model(rows, outputs, name="digits_transformer")


def main(epochs: int = 15, verbose: int = 2) -> dict:
    strategy = phalanx.MirroredStrategy()
    print(f"Number of devices: {strategy.num_replicas_in_sync}")
    (x, y), (xt, yt) = phalanx.datasets.digits.load_data()
    x, xt = x.reshape(-1, 8, 8), xt.reshape(-1, 8, 8)  # a sequence of 8 rows

    with strategy.scope():
        model = build_model()
        model.compile(
            optimizer=phalanx.optimizers.Adam(learning_rate=3e-3),
            loss="sparse_categorical_crossentropy",
            metrics=["accuracy"],
            steps_per_execution=4,
        )
    model.summary()
    history = model.fit(
        x,
        y,
        batch_size=8 * strategy.num_replicas_in_sync,
        epochs=epochs,
        validation_split=0.1,  # held out from the training examples; the test set stays apart
        verbose=verbose,
    )
    test_loss, test_accuracy = model.evaluate(xt, yt, verbose=0)
    print(f"test loss {test_loss:.4f}, test accuracy {test_accuracy:.4f}")
    return {"history": history.history, "test_accuracy": test_accuracy}


if __name__ == "__main__":
    main()
