float('')
