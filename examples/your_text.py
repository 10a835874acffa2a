"""Text: tf-idf of documents reduced by truncated SVD, with answers that may be wrong (alpha for q = 0.1).

python examples/your_text.py
"""

import time

import numpy as np
from sklearn.decomposition import TruncatedSVD
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.metrics import adjusted_rand_score

from dcgmm_tf import DCGMMClustering, default_alpha

start = time.time()
topics = [
    ["goal", "match", "league", "coach", "striker", "season"],
    ["vote", "party", "election", "minister", "law"],
    ["gene", "cell", "protein", "virus", "enzyme"],
    ["stock", "market", "bank", "price", "trade"],
]
common = ["the", "a", "of", "new", "said", "year", "report", "today"]
rng = np.random.default_rng(0)
y = rng.integers(0, 4, 600)
documents = [" ".join(rng.choice(topics[c] + common, 12)) for c in y]  # stand in for your documents
x = TruncatedSVD(20, random_state=0).fit_transform(TfidfVectorizer(sublinear_tf=True).fit_transform(documents))
i, j = rng.integers(0, len(x), (2, 200))
ml = [(a, b) for a, b in zip(i, j) if a != b and y[a] == y[b]]
cl = [(a, b) for a, b in zip(i, j) if y[a] != y[b]]
est = DCGMMClustering(4, hidden_units=(64, 64), alpha=default_alpha(0.1), random_state=0).fit(x, ml=ml, cl=cl)
print(f"ARI {adjusted_rand_score(y, est.labels_):.3f}, {est.schedule_}, {time.time() - start:.0f} s")
