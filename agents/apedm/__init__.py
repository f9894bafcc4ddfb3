"""AP-EDM (HB-Eval Algorithms 1–2): a model-driven agent guided by an episodic memory."""
