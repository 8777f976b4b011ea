"""mcl.translate"""
