"""What a model is, independent of any finding: its tensors, their storage, how sglang
shards them, what a step reads, and how sglang sizes the KV and state pools."""
