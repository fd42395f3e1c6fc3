repr()
