"""A table: scikit-learn's wine, 13 features on their own scales, with the answers to 100 random questions.

python examples/your_table.py
"""

import time

import numpy as np
from sklearn.datasets import load_wine
from sklearn.metrics import adjusted_rand_score

from dcgmm_tf import DCGMMClustering

start = time.time()
x, y = load_wine(return_X_y=True)  # each feature standardised inside (Gaussian likelihood)
i, j = np.random.default_rng(0).integers(0, len(x), (2, 100))
ml = [(a, b) for a, b in zip(i, j) if a != b and y[a] == y[b]]  # the "same" answers
cl = [(a, b) for a, b in zip(i, j) if y[a] != y[b]]  # the "different" answers
est = DCGMMClustering(3, hidden_units=(64, 64), random_state=0).fit(x, ml=ml, cl=cl)
print(f"ARI {adjusted_rand_score(y, est.labels_):.3f}, {est.schedule_}, {time.time() - start:.0f} s")
