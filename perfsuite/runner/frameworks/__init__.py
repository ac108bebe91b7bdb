"""What the runner asks of PyTorch or TensorFlow: building the train state, reading switch
effects back, the FLOP count and the profile window of each framework."""
