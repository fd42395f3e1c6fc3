[(0).bit_length(), (1).bit_length(), (255).bit_length(), (256).bit_length(), (-255).bit_length(), (12345678901234567890).bit_length()]
