['hello world'.capitalize(), 'HELLO'.capitalize(), ''.capitalize(), '1abc'.capitalize(), 'éCOLE'.capitalize(), 'ßa'.capitalize()]
