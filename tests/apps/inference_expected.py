# The expected values of tests/apps/inference_test.cpp, computed with scipy 1.17.1 and numpy 2.4.6:
#   python3 -m venv v && v/bin/pip install scipy numpy && v/bin/python this.py
import numpy as np
from scipy import stats
a = np.array([0.61, 0.72, 0.55, 0.80, 0.67])
b = np.array([0.70, 0.75, 0.62, 0.79, 0.74])
d = b - a
res = stats.permutation_test((a, b), lambda x, y: np.mean(y - x), permutation_type='samples',
                             n_resamples=np.inf, alternative='two-sided')
print("paired sign flip p", repr(res.pvalue))
u1 = np.array([0.61, 0.72, 0.55, 0.80])
u2 = np.array([0.70, 0.75, 0.62, 0.79, 0.74, 0.90])
res = stats.permutation_test((u1, u2), lambda x, y: np.mean(y) - np.mean(x),
                             permutation_type='independent', n_resamples=np.inf,
                             alternative='two-sided')
print("unpaired p", repr(res.pvalue))
x = np.array([3.0, 1.0, 9.0, 4.0, 100.0, 5.0, 2.0])
print("trim_mean", repr(stats.trim_mean(x, 0.25)), "median", repr(np.median(x)))
print("fisher", repr(stats.combine_pvalues([0.01, 0.2, 0.5], method='fisher').pvalue))
print("norm.ppf", repr(stats.norm.ppf(0.975)), repr(stats.norm.ppf(0.8)))
# seeds for 80% power, effect 1, sd 2: ((z975 + z80) * 2 / 1)^2
z = stats.norm.ppf(0.975) + stats.norm.ppf(0.8)
print("power n", repr((z * 2.0) ** 2), int(np.ceil((z * 2.0) ** 2)))
d = np.array([0.2, -0.1, 0.15, -0.05])
print("power n for differences", d, repr((z * d.std(ddof=1) / d.mean()) ** 2))
