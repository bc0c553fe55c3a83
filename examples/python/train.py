# Train a tiny RMSNorm decoder on the embedded corpus, checkpoint it, resume it, sample from it.
#   PYTHONPATH=build/python /usr/bin/python3 examples/python/train.py
import tapegrad as tg

config = tg.lm.TrainConfig(norm="rmsnorm", dim=64, layers=2, steps=200, lr=3e-3, eval_every=50)
trainer = tg.lm.Trainer(config)
trainer.fit(until=100)                       # the first half, printing each evaluation
trainer.save("runs/python-train")            # model, optimizer and data position
trainer = tg.lm.Trainer.resume("runs/python-train")
trainer.fit()                                # the second half, exactly as if never stopped
print(trainer.generate("The ", tokens=120, temperature=0.8, seed=1))
