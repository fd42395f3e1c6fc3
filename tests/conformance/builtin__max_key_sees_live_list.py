# max()/min() pull items one at a time and call the key before pulling the
# next, so a key that shrinks or grows the list changes what is iterated.
stack = [3, 1, 2]
best = max(stack, key=lambda x: stack.pop())
grow = [3, 1, 2]
low = min(grow, key=lambda x: (grow.append(0) if len(grow) < 6 else None) or -len(grow))
(best, stack, low, grow)
