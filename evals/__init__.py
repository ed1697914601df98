"""Memory evaluation: scripted scenarios played against this agent and its alternatives."""
