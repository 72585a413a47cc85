"""The afford command: run tasks, list tasks, robots and objects, evaluate, train, bring graphs up."""
