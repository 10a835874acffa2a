"""Images: scikit-learn's 8x8 digits (values 0-16) with 500 answered pairs.

python examples/your_images.py
"""

import time

from sklearn.datasets import load_digits
from sklearn.metrics import adjusted_rand_score

from dcgmm_tf import ConstraintSet, DCGMMClustering

start = time.time()
x, y = load_digits(return_X_y=True)  # pixels 0..16: mapped onto [0, 1] inside for the Bernoulli likelihood
pairs = ConstraintSet.from_labels(y, 500, seed=0)  # stands in for 500 answers of a person
est = DCGMMClustering(10, likelihood="bernoulli", hidden_units=(256, 256), random_state=0)
est.fit(x, constraints=pairs)
print(f"ARI {adjusted_rand_score(y, est.labels_):.3f}, {est.schedule_}, {time.time() - start:.0f} s")
