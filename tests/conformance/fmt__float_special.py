inf = float('inf')
nan = float('nan')
[f'{inf}', f'{-inf:.2f}', f'{nan:e}', f'{inf:10}', f'{nan:+}', f'{inf:F}', f'{nan:G}', f'{inf:%}', f'{-0.0:.1f}', f'{-0.0:+}', f'{-0.0:g}']
