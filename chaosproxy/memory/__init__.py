"""Building ap-edm's episodic memory from scored run directories (HB-Eval Algorithm 1)."""
