"""Scratch probe (issue 22): 10-NN accuracy of HOG settings on 20,000 training and 5,000 test samples of Fashion-MNIST.

Run from the repository root with the project's virtualenv; output.txt beside it is what it printed.
"""

import time

import numpy as np
from sklearn.neighbors import KNeighborsClassifier

from dcgmm_tf.data import load_dataset
from dcgmm_tf.data.features import hog_features

d = load_dataset("fashion")
rng = np.random.default_rng(0)
tr = rng.choice(len(d.x_train), 20000, replace=False)
te = rng.choice(len(d.x_test), 5000, replace=False)
xtr = d.x_train[tr].reshape(-1, 28, 28)
xte = d.x_test[te].reshape(-1, 28, 28)
ytr, yte = d.y_train[tr], d.y_test[te]


def knn(a, b):
    return KNeighborsClassifier(10).fit(a, ytr).score(b, yte)


feats = {
    "pixels": lambda x: x.reshape(len(x), -1),
    "hog4": lambda x: hog_features(x),
    "hog7": lambda x: hog_features(x, cell=7),
    "hog4_o12": lambda x: hog_features(x, orientations=12),
    "hog4_sqrt": lambda x: hog_features(np.sqrt(x)),
    "hog4_b3": lambda x: hog_features(x, block=3),
    "pix+hog4": lambda x: np.hstack([x.reshape(len(x), -1), hog_features(x)]),
    "hog4+hog7": lambda x: np.hstack([hog_features(x), hog_features(x, cell=7)]),
}
for k, f in feats.items():
    t = time.time()
    a, b = f(xtr), f(xte)
    print(k, a.shape[1], round(knn(a, b), 4), f"{time.time() - t:.0f}s", flush=True)
