import numpy as np
import pandas as pd


def summary(values):
    s = pd.Series(values)
    return {"mean": float(np.mean(values)), "max": float(s.max())}
